#!/bin/bash
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH=/opt/io/bin:$PATH
export LD_LIBRARY_PATH=/opt/io/lib:${LD_LIBRARY_PATH:-}
mkdir -p "/tmp/oldscr-72c6146/quickstart/20261123T182801Z-9f698c/c434576e-r2"
echo "/tmp/oldscr-72c6146/quickstart/20261123T182801Z-9f698c/c434576e-r2" > iolab-casedir.txt
{ findmnt -n -o FSTYPE -T "/tmp/oldscr-72c6146/quickstart/20261123T182801Z-9f698c/c434576e-r2" 2>/dev/null || stat -f -c %T "/tmp/oldscr-72c6146/quickstart/20261123T182801Z-9f698c/c434576e-r2"; } > iolab-fstype.txt
{ command -v fio && sha256sum "$(command -v fio)"; } > iolab-binary.txt
fio --output-format=json --output=fio.json fio-job.fio
echo $? > iolab-exit-code.txt
rm -rf "/tmp/oldscr-72c6146/quickstart/20261123T182801Z-9f698c/c434576e-r2"
