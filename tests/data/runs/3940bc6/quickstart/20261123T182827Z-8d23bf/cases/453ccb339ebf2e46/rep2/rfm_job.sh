#!/bin/bash
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH=/opt/io/bin:"$PATH"
export LD_LIBRARY_PATH=/opt/io/lib"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p /tmp/oldscr-3940bc6/quickstart/20261123T182827Z-8d23bf/453ccb339ebf2e46-r2 2> iolab-mkdir.txt || { printf '%s: %s\n' 'cannot create the case directory /tmp/oldscr-3940bc6/quickstart/20261123T182827Z-8d23bf/453ccb339ebf2e46-r2' "$(head -n 1 iolab-mkdir.txt 2>/dev/null)" > iolab-job-error.txt; cat iolab-job-error.txt >&2; exit 3; }
printf '%s\n' /tmp/oldscr-3940bc6/quickstart/20261123T182827Z-8d23bf/453ccb339ebf2e46-r2 > iolab-casedir.txt
{ findmnt -n -o FSTYPE -T /tmp/oldscr-3940bc6/quickstart/20261123T182827Z-8d23bf/453ccb339ebf2e46-r2 2>/dev/null || stat -f -c %T /tmp/oldscr-3940bc6/quickstart/20261123T182827Z-8d23bf/453ccb339ebf2e46-r2; } > iolab-fstype.txt
{ command -v fio && sha256sum "$(command -v fio)"; } > iolab-binary.txt
printf '%s\n' "${EPOCHREALTIME:-$(date +%s.%N)}" > /tmp/oldrun-3940bc6/reframe/output/local/runs/20261123T182826-5185/stage/local/default/openmpi/quickstart_5bf6102c/iolab-times.txt
fio --output-format=json --output=fio.json fio-job.fio
echo $? > iolab-exit-code.txt
printf '%s\n' "${EPOCHREALTIME:-$(date +%s.%N)}" >> /tmp/oldrun-3940bc6/reframe/output/local/runs/20261123T182826-5185/stage/local/default/openmpi/quickstart_5bf6102c/iolab-times.txt
rm -rf /tmp/oldscr-3940bc6/quickstart/20261123T182827Z-8d23bf/453ccb339ebf2e46-r2
