#!/bin/bash
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p /tmp/iolab-scratch/first-fio/20261128T184854Z-282d86/c434576ee354080e-r1 2> iolab-mkdir.txt || { printf '%s: %s\n' 'cannot create the case directory /tmp/iolab-scratch/first-fio/20261128T184854Z-282d86/c434576ee354080e-r1' "$(head -n 1 iolab-mkdir.txt 2>/dev/null)" > iolab-job-error.txt; cat iolab-job-error.txt >&2; exit 3; }
printf '%s\n' /tmp/iolab-scratch/first-fio/20261128T184854Z-282d86/c434576ee354080e-r1 > iolab-casedir.txt
{ findmnt -n -o FSTYPE -T /tmp/iolab-scratch/first-fio/20261128T184854Z-282d86/c434576ee354080e-r1 2>/dev/null || stat -f -c %T /tmp/iolab-scratch/first-fio/20261128T184854Z-282d86/c434576ee354080e-r1; } > iolab-fstype.txt
{ command -v fio && sha256sum "$(command -v fio)"; } > iolab-binary.txt
printf '%s\n' "${SLURM_JOB_NODELIST:-}" > iolab-nodes.txt
printf '%s\n' "${EPOCHREALTIME:-$(date +%s.%N)}" > /tmp/iolab-tutorial/reframe/output/local/runs/20261128T184854-27330/stage/local/default/openmpi/first_fio_1e45d52f/iolab-times.txt
fio --output-format=json --output=fio.json fio-job.fio
echo $? > iolab-exit-code.txt
printf '%s\n' "${EPOCHREALTIME:-$(date +%s.%N)}" >> /tmp/iolab-tutorial/reframe/output/local/runs/20261128T184854-27330/stage/local/default/openmpi/first_fio_1e45d52f/iolab-times.txt
rm -rf /tmp/iolab-scratch/first-fio/20261128T184854Z-282d86/c434576ee354080e-r1
