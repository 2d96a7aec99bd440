#!/bin/bash
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export ROMIO_PRINT_HINTS=1
export ROMIO_HINTS=iolab-romio-hints.txt
export OMPI_MCA_io=romio321
export PATH=/opt/io/bin:$PATH
export LD_LIBRARY_PATH=/opt/io/lib:${LD_LIBRARY_PATH:-}
export DARSHAN_LOGFILE=/tmp/oldrun-72c6146/reframe/output/local-romio/stage/local-romio/default/openmpi/cp2k_aggregators_d710bb59/darshan.log
export DARSHAN_LOGHINTS=cb_nodes=1
mkdir -p "/tmp/oldscr-72c6146/cp2k-aggregators/20261123T182810Z-4fa9bd/278510bd-r2"
echo "/tmp/oldscr-72c6146/cp2k-aggregators/20261123T182810Z-4fa9bd/278510bd-r2" > iolab-casedir.txt
{ findmnt -n -o FSTYPE -T "/tmp/oldscr-72c6146/cp2k-aggregators/20261123T182810Z-4fa9bd/278510bd-r2" 2>/dev/null || stat -f -c %T "/tmp/oldscr-72c6146/cp2k-aggregators/20261123T182810Z-4fa9bd/278510bd-r2"; } > iolab-fstype.txt
{ command -v ior && sha256sum "$(command -v ior)"; } > iolab-binary.txt
mpirun -np 4 -x OMPI_MCA_io -x ROMIO_HINTS -x ROMIO_PRINT_HINTS --oversubscribe -x LD_PRELOAD=/opt/io/lib/libdarshan.so -x DARSHAN_LOGFILE -x DARSHAN_LOGHINTS ior -a MPIIO -b 8m -t 1m -s 1 -i 1 -c -e -w -o /tmp/oldscr-72c6146/cp2k-aggregators/20261123T182810Z-4fa9bd/278510bd-r2/testfile -O summaryFormat=JSON -O summaryFile=ior-summary.json --mpiio.hintsFileName=iolab-ior-hints.txt --mpiio.showHints
echo $? > iolab-exit-code.txt
rm -rf "/tmp/oldscr-72c6146/cp2k-aggregators/20261123T182810Z-4fa9bd/278510bd-r2"
