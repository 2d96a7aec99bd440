#!/bin/bash
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH=/opt/io/bin:"$PATH"
export LD_LIBRARY_PATH=/opt/io/lib"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p /tmp/oldscr-3940bc6/quickstart/20261123T182827Z-8d23bf/29aae211d45eba3d-r2 2> iolab-mkdir.txt || { printf '%s: %s\n' 'cannot create the case directory /tmp/oldscr-3940bc6/quickstart/20261123T182827Z-8d23bf/29aae211d45eba3d-r2' "$(head -n 1 iolab-mkdir.txt 2>/dev/null)" > iolab-job-error.txt; cat iolab-job-error.txt >&2; exit 3; }
printf '%s\n' /tmp/oldscr-3940bc6/quickstart/20261123T182827Z-8d23bf/29aae211d45eba3d-r2 > iolab-casedir.txt
{ findmnt -n -o FSTYPE -T /tmp/oldscr-3940bc6/quickstart/20261123T182827Z-8d23bf/29aae211d45eba3d-r2 2>/dev/null || stat -f -c %T /tmp/oldscr-3940bc6/quickstart/20261123T182827Z-8d23bf/29aae211d45eba3d-r2; } > iolab-fstype.txt
{ command -v ior && sha256sum "$(command -v ior)"; } > iolab-binary.txt
printf '%s\n' "${EPOCHREALTIME:-$(date +%s.%N)}" > /tmp/oldrun-3940bc6/reframe/output/local/runs/20261123T182826-5185/stage/local/default/openmpi/quickstart_7128ce65/iolab-times.txt
mpirun -np 2 ior -a MPIIO -b 8m -t 1m -s 1 -i 2 -c -e -w -r -o /tmp/oldscr-3940bc6/quickstart/20261123T182827Z-8d23bf/29aae211d45eba3d-r2/testfile -O summaryFormat=JSON -O summaryFile=ior-summary.json
echo $? > iolab-exit-code.txt
printf '%s\n' "${EPOCHREALTIME:-$(date +%s.%N)}" >> /tmp/oldrun-3940bc6/reframe/output/local/runs/20261123T182826-5185/stage/local/default/openmpi/quickstart_7128ce65/iolab-times.txt
rm -rf /tmp/oldscr-3940bc6/quickstart/20261123T182827Z-8d23bf/29aae211d45eba3d-r2
