#!/bin/bash
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH=/tmp/iolab-why/stack/bin:"$PATH"
export LD_LIBRARY_PATH=/tmp/iolab-why/stack/lib"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DARSHAN_LOGFILE=/tmp/iolab-why/iolab/reframe/output/local/runs/20261129T011637-14809/stage/local/default/openmpi/why_fio_block_size_fc263bfc/darshan.log
export DARSHAN_LOGHINTS=cb_nodes=1
export DARSHAN_ENABLE_NONMPI=1
export DARSHAN_MOD_ENABLE=DXT_POSIX,DXT_MPIIO
mkdir -p /tmp/iolab-why/scratch/why-fio-block-size/20261129T011637Z-ecfa03/d65fe39e7a8e2413-r1 2> iolab-mkdir.txt || { printf '%s: %s\n' 'cannot create the case directory /tmp/iolab-why/scratch/why-fio-block-size/20261129T011637Z-ecfa03/d65fe39e7a8e2413-r1' "$(head -n 1 iolab-mkdir.txt 2>/dev/null)" > iolab-job-error.txt; cat iolab-job-error.txt >&2; exit 3; }
printf '%s\n' /tmp/iolab-why/scratch/why-fio-block-size/20261129T011637Z-ecfa03/d65fe39e7a8e2413-r1 > iolab-casedir.txt
{ findmnt -n -o FSTYPE -T /tmp/iolab-why/scratch/why-fio-block-size/20261129T011637Z-ecfa03/d65fe39e7a8e2413-r1 2>/dev/null || stat -f -c %T /tmp/iolab-why/scratch/why-fio-block-size/20261129T011637Z-ecfa03/d65fe39e7a8e2413-r1; } > iolab-fstype.txt
{ command -v fio && sha256sum "$(command -v fio)"; } > iolab-binary.txt
printf '%s\n' "${SLURM_JOB_NODELIST:-}" > iolab-nodes.txt
printf '%s\n' "${EPOCHREALTIME:-$(date +%s.%N)}" > /tmp/iolab-why/iolab/reframe/output/local/runs/20261129T011637-14809/stage/local/default/openmpi/why_fio_block_size_fc263bfc/iolab-times.txt
LD_PRELOAD=/tmp/iolab-why/stack/lib/libdarshan.so fio --output-format=json --output=fio.json fio-job.fio
echo $? > iolab-exit-code.txt
printf '%s\n' "${EPOCHREALTIME:-$(date +%s.%N)}" >> /tmp/iolab-why/iolab/reframe/output/local/runs/20261129T011637-14809/stage/local/default/openmpi/why_fio_block_size_fc263bfc/iolab-times.txt
rm -rf /tmp/iolab-why/scratch/why-fio-block-size/20261129T011637Z-ecfa03/d65fe39e7a8e2413-r1
