#!/bin/bash
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p /tmp/oldscr-855c081/quickstart/20261123T182533Z-baeba3/453ccb33-r2
{ findmnt -n -o FSTYPE -T /tmp/oldscr-855c081/quickstart/20261123T182533Z-baeba3/453ccb33-r2 2>/dev/null || stat -f -c %T /tmp/oldscr-855c081/quickstart/20261123T182533Z-baeba3/453ccb33-r2; } > iolab-fstype.txt
command -v fio > iolab-binary.txt
fio --output-format=json --output=fio.json fio-job.fio
echo $? > iolab-exit-code.txt
rm -rf /tmp/oldscr-855c081/quickstart/20261123T182533Z-baeba3/453ccb33-r2
