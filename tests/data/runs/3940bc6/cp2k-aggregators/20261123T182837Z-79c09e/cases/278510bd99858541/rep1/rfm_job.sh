#!/bin/bash
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export ROMIO_PRINT_HINTS=1
export ROMIO_HINTS=iolab-romio-hints.txt
export OMPI_MCA_io=romio321
export PATH=/opt/io/bin:"$PATH"
export LD_LIBRARY_PATH=/opt/io/lib"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DARSHAN_LOGFILE=/tmp/oldrun-3940bc6/reframe/output/local-romio/runs/20261123T182836-5799/stage/local-romio/default/openmpi/cp2k_aggregators_dd2e9eb5/darshan.log
export DARSHAN_LOGHINTS=cb_nodes=1
mkdir -p /tmp/oldscr-3940bc6/cp2k-aggregators/20261123T182837Z-79c09e/278510bd99858541-r1 2> iolab-mkdir.txt || { printf '%s: %s\n' 'cannot create the case directory /tmp/oldscr-3940bc6/cp2k-aggregators/20261123T182837Z-79c09e/278510bd99858541-r1' "$(head -n 1 iolab-mkdir.txt 2>/dev/null)" > iolab-job-error.txt; cat iolab-job-error.txt >&2; exit 3; }
printf '%s\n' /tmp/oldscr-3940bc6/cp2k-aggregators/20261123T182837Z-79c09e/278510bd99858541-r1 > iolab-casedir.txt
{ findmnt -n -o FSTYPE -T /tmp/oldscr-3940bc6/cp2k-aggregators/20261123T182837Z-79c09e/278510bd99858541-r1 2>/dev/null || stat -f -c %T /tmp/oldscr-3940bc6/cp2k-aggregators/20261123T182837Z-79c09e/278510bd99858541-r1; } > iolab-fstype.txt
{ command -v ior && sha256sum "$(command -v ior)"; } > iolab-binary.txt
printf '%s\n' "${EPOCHREALTIME:-$(date +%s.%N)}" > /tmp/oldrun-3940bc6/reframe/output/local-romio/runs/20261123T182836-5799/stage/local-romio/default/openmpi/cp2k_aggregators_dd2e9eb5/iolab-times.txt
mpirun -np 4 -x OMPI_MCA_io -x ROMIO_HINTS -x ROMIO_PRINT_HINTS --oversubscribe -x LD_PRELOAD=/opt/io/lib/libdarshan.so -x DARSHAN_LOGFILE -x DARSHAN_LOGHINTS ior -a MPIIO -b 8m -t 1m -s 1 -i 1 -c -e -w -o /tmp/oldscr-3940bc6/cp2k-aggregators/20261123T182837Z-79c09e/278510bd99858541-r1/testfile -O summaryFormat=JSON -O summaryFile=ior-summary.json --mpiio.hintsFileName=iolab-ior-hints.txt --mpiio.showHints
echo $? > iolab-exit-code.txt
printf '%s\n' "${EPOCHREALTIME:-$(date +%s.%N)}" >> /tmp/oldrun-3940bc6/reframe/output/local-romio/runs/20261123T182836-5799/stage/local-romio/default/openmpi/cp2k_aggregators_dd2e9eb5/iolab-times.txt
rm -rf /tmp/oldscr-3940bc6/cp2k-aggregators/20261123T182837Z-79c09e/278510bd99858541-r1
