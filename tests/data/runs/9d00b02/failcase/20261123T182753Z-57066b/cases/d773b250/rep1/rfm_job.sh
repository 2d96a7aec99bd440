#!/bin/bash
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH=/opt/io/bin:$PATH
export LD_LIBRARY_PATH=/opt/io/lib:${LD_LIBRARY_PATH:-}
mkdir -p "/tmp/oldscr-9d00b02/failcase/20261123T182753Z-57066b/d773b250-r1"
echo "/tmp/oldscr-9d00b02/failcase/20261123T182753Z-57066b/d773b250-r1" > iolab-casedir.txt
{ findmnt -n -o FSTYPE -T "/tmp/oldscr-9d00b02/failcase/20261123T182753Z-57066b/d773b250-r1" 2>/dev/null || stat -f -c %T "/tmp/oldscr-9d00b02/failcase/20261123T182753Z-57066b/d773b250-r1"; } > iolab-fstype.txt
{ command -v ior && sha256sum "$(command -v ior)"; } > iolab-binary.txt
mpirun -np 2 ior -a POSIX -b 4000 -t 1000 -s 1 -i 1 -F -w -r -o /tmp/oldscr-9d00b02/failcase/20261123T182753Z-57066b/d773b250-r1/testfile -O summaryFormat=JSON -O summaryFile=ior-summary.json --posix.odirect
echo $? > iolab-exit-code.txt
rm -rf "/tmp/oldscr-9d00b02/failcase/20261123T182753Z-57066b/d773b250-r1"
