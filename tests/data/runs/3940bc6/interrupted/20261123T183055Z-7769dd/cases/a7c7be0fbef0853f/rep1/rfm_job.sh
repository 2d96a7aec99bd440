#!/bin/bash
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH=/opt/io/bin:"$PATH"
export LD_LIBRARY_PATH=/opt/io/lib"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p /tmp/oldscr-3940bc6/interrupted/20261123T183055Z-7769dd/a7c7be0fbef0853f-r1 2> iolab-mkdir.txt || { printf '%s: %s\n' 'cannot create the case directory /tmp/oldscr-3940bc6/interrupted/20261123T183055Z-7769dd/a7c7be0fbef0853f-r1' "$(head -n 1 iolab-mkdir.txt 2>/dev/null)" > iolab-job-error.txt; cat iolab-job-error.txt >&2; exit 3; }
printf '%s\n' /tmp/oldscr-3940bc6/interrupted/20261123T183055Z-7769dd/a7c7be0fbef0853f-r1 > iolab-casedir.txt
{ findmnt -n -o FSTYPE -T /tmp/oldscr-3940bc6/interrupted/20261123T183055Z-7769dd/a7c7be0fbef0853f-r1 2>/dev/null || stat -f -c %T /tmp/oldscr-3940bc6/interrupted/20261123T183055Z-7769dd/a7c7be0fbef0853f-r1; } > iolab-fstype.txt
{ command -v ior && sha256sum "$(command -v ior)"; } > iolab-binary.txt
printf '%s\n' "${EPOCHREALTIME:-$(date +%s.%N)}" > /tmp/oldrun-3940bc6/reframe/output/local/runs/20261123T183051-10996/stage/local/default/openmpi/interrupted_58989a3a/iolab-times.txt
mpirun -np 2 ior -a POSIX -b 16m -t 1m -s 1 -i 3 -F -e -w -r -o /tmp/oldscr-3940bc6/interrupted/20261123T183055Z-7769dd/a7c7be0fbef0853f-r1/testfile -O summaryFormat=JSON -O summaryFile=ior-summary.json -d 3
echo $? > iolab-exit-code.txt
printf '%s\n' "${EPOCHREALTIME:-$(date +%s.%N)}" >> /tmp/oldrun-3940bc6/reframe/output/local/runs/20261123T183051-10996/stage/local/default/openmpi/interrupted_58989a3a/iolab-times.txt
rm -rf /tmp/oldscr-3940bc6/interrupted/20261123T183055Z-7769dd/a7c7be0fbef0853f-r1
