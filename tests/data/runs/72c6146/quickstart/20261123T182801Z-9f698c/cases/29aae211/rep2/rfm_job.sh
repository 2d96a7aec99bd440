#!/bin/bash
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH=/opt/io/bin:$PATH
export LD_LIBRARY_PATH=/opt/io/lib:${LD_LIBRARY_PATH:-}
mkdir -p "/tmp/oldscr-72c6146/quickstart/20261123T182801Z-9f698c/29aae211-r2"
echo "/tmp/oldscr-72c6146/quickstart/20261123T182801Z-9f698c/29aae211-r2" > iolab-casedir.txt
{ findmnt -n -o FSTYPE -T "/tmp/oldscr-72c6146/quickstart/20261123T182801Z-9f698c/29aae211-r2" 2>/dev/null || stat -f -c %T "/tmp/oldscr-72c6146/quickstart/20261123T182801Z-9f698c/29aae211-r2"; } > iolab-fstype.txt
{ command -v ior && sha256sum "$(command -v ior)"; } > iolab-binary.txt
mpirun -np 2 ior -a MPIIO -b 8m -t 1m -s 1 -i 2 -c -e -w -r -o /tmp/oldscr-72c6146/quickstart/20261123T182801Z-9f698c/29aae211-r2/testfile -O summaryFormat=JSON -O summaryFile=ior-summary.json
echo $? > iolab-exit-code.txt
rm -rf "/tmp/oldscr-72c6146/quickstart/20261123T182801Z-9f698c/29aae211-r2"
