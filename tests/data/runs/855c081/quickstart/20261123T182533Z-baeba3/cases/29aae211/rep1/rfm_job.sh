#!/bin/bash
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p /tmp/oldscr-855c081/quickstart/20261123T182533Z-baeba3/29aae211-r1
{ findmnt -n -o FSTYPE -T /tmp/oldscr-855c081/quickstart/20261123T182533Z-baeba3/29aae211-r1 2>/dev/null || stat -f -c %T /tmp/oldscr-855c081/quickstart/20261123T182533Z-baeba3/29aae211-r1; } > iolab-fstype.txt
command -v ior > iolab-binary.txt
mpirun -np 2 ior -a MPIIO -b 8m -t 1m -s 1 -i 2 -c -e -w -r -o /tmp/oldscr-855c081/quickstart/20261123T182533Z-baeba3/29aae211-r1/testfile -O summaryFormat=JSON -O summaryFile=ior-summary.json
echo $? > iolab-exit-code.txt
rm -rf /tmp/oldscr-855c081/quickstart/20261123T182533Z-baeba3/29aae211-r1
