#!/bin/bash
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p /tmp/oldscr-855c081/failcase/20261123T182614Z-0d32f5/d773b250-r1
{ findmnt -n -o FSTYPE -T /tmp/oldscr-855c081/failcase/20261123T182614Z-0d32f5/d773b250-r1 2>/dev/null || stat -f -c %T /tmp/oldscr-855c081/failcase/20261123T182614Z-0d32f5/d773b250-r1; } > iolab-fstype.txt
command -v ior > iolab-binary.txt
mpirun -np 2 ior -a POSIX -b 4000 -t 1000 -s 1 -i 1 -F -w -r -o /tmp/oldscr-855c081/failcase/20261123T182614Z-0d32f5/d773b250-r1/testfile -O summaryFormat=JSON -O summaryFile=ior-summary.json --posix.odirect
echo $? > iolab-exit-code.txt
rm -rf /tmp/oldscr-855c081/failcase/20261123T182614Z-0d32f5/d773b250-r1
