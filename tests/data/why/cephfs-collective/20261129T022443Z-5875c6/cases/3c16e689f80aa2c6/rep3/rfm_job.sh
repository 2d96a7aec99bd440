#!/bin/bash
#SBATCH --job-name="rfm_cephfs_collective_abd75d62"
#SBATCH --ntasks=8
#SBATCH --ntasks-per-node=2
#SBATCH --output=rfm_job.out
#SBATCH --error=rfm_job.err
#SBATCH --time=0:2:0
#SBATCH --partition=compute
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader,tcp
export OMPI_MCA_btl_tcp_if_include=169.254.82.0/24
export OMPI_MCA_oob_tcp_if_include=169.254.82.0/24
export SLURM_MPI_TYPE=pmix
export SLURM_KILL_BAD_EXIT=1
export SLURM_PMIX_FENCE=ring
export CEPH_CONF=/tmp/iolab-why/ceph/ceph.conf
export ROMIO_PRINT_HINTS=1
export ROMIO_HINTS=iolab-romio-hints.txt
export OMPI_MCA_io=romio321
export PATH=/tmp/iolab-why/stack/bin:"$PATH"
export LD_LIBRARY_PATH=/tmp/iolab-why/stack/lib"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DARSHAN_LOGFILE=/tmp/iolab-why/iolab/reframe/output/localcluster-ceph/runs/20261129T022443-16167/stage/localcluster-ceph/compute/openmpi/cephfs_collective_abd75d62/darshan.log
export DARSHAN_LOGHINTS=cb_nodes=1
export DARSHAN_MOD_ENABLE=DXT_POSIX,DXT_MPIIO
mkdir -p /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3 2> iolab-mkdir.txt || { printf '%s: %s\n' 'cannot create the case directory /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3' "$(head -n 1 iolab-mkdir.txt 2>/dev/null)" > iolab-job-error.txt; cat iolab-job-error.txt >&2; exit 3; }
printf '%s\n' /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3 > iolab-casedir.txt
{ findmnt -n -o FSTYPE -T /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3 2>/dev/null || stat -f -c %T /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3; } > iolab-fstype.txt
case "$(cat iolab-fstype.txt)" in fuse.ceph-fuse|ceph) setfattr -n ceph.dir.layout -v 'stripe_unit=1048576 stripe_count=4 object_size=4194304' /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3 > iolab-cephfs-setlayout.txt 2>&1; iolab_cl=$?; echo "exit=$iolab_cl" >> iolab-cephfs-setlayout.txt; if [ $iolab_cl -ne 0 ]; then { printf '%s: %s\n' 'setfattr ceph.dir.layout failed' "$(head -n 1 iolab-cephfs-setlayout.txt 2>/dev/null)" > iolab-job-error.txt; cat iolab-job-error.txt >&2; exit 3; }; fi;; esac
{ command -v ior && sha256sum "$(command -v ior)"; } > iolab-binary.txt
printf '%s\n' "${SLURM_JOB_NODELIST:-}" > iolab-nodes.txt
printf '%s\n' "${EPOCHREALTIME:-$(date +%s.%N)}" > /tmp/iolab-why/iolab/reframe/output/localcluster-ceph/runs/20261129T022443-16167/stage/localcluster-ceph/compute/openmpi/cephfs_collective_abd75d62/iolab-times.txt
srun --mpi=pmix --export=ALL,LD_PRELOAD=/tmp/iolab-why/stack/lib/libdarshan.so ior -a MPIIO -b 4m -t 1m -s 1 -i 1 -c -e -w -k -o /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3/testfile -O summaryFormat=JSON -O summaryFile=ior-summary.json --mpiio.hintsFileName=iolab-ior-hints.txt --mpiio.showHints
echo $? > iolab-exit-code.txt
printf '%s\n' "${EPOCHREALTIME:-$(date +%s.%N)}" >> /tmp/iolab-why/iolab/reframe/output/localcluster-ceph/runs/20261129T022443-16167/stage/localcluster-ceph/compute/openmpi/cephfs_collective_abd75d62/iolab-times.txt
case "$(cat iolab-fstype.txt)" in fuse.ceph-fuse|ceph) { ls -1 /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3 | head -n 64 | while IFS= read -r f; do [ -f /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3/"$f" ] || continue; echo "$f"; done | while IFS= read -r f; do printf '### %s inode=%s size=%s\n' "$f" "$(stat -c %i /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3/"$f")" "$(stat -c %s /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3/"$f")"; getfattr -n ceph.file.layout --only-values /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3/"$f" < /dev/null; echo; done; } > iolab-cephfs-files.txt 2>&1; if command -v ceph > /dev/null && command -v rados > /dev/null && [ -n "${CEPH_CONF:-}" ]; then { printf 'cluster_osds=%s\n' "$(timeout 30 ceph osd ls < /dev/null | tr '\n' ' ')"; ls -1 /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3 | head -n 64 | while IFS= read -r f; do [ -f /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3/"$f" ] || continue; echo "$f"; done | head -n 4 | while IFS= read -r f; do timeout 30 sync /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3/"$f" < /dev/null; hex=$(printf '%x' "$(stat -c %i /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3/"$f")"); pool=$(getfattr -n ceph.file.layout.pool --only-values /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3/"$f" 2>/dev/null < /dev/null); printf '### %s inode_hex=%s pool=%s\n' "$f" "$hex" "$pool"; objs=$(timeout 30 rados -p "$pool" ls < /dev/null | grep "^$hex\." | sort); printf 'objects=%s\n' "$(printf '%s' "$objs" | grep -c .)"; printf '%s\n' "$objs" | grep . | head -n 32 | while read -r o; do timeout 30 ceph osd map "$pool" "$o" < /dev/null; timeout 30 rados -p "$pool" stat "$o" < /dev/null; done; done; } > iolab-cephfs-spread.txt 2>&1; else echo 'no server-side witness: the ceph and rados CLIs and CEPH_CONF are not all in the job environment' > iolab-cephfs-spread.txt; fi;; esac
rm -rf /tmp/iolab-why/ceph/mnt/iolab-scratch/cephfs-collective/20261129T022443Z-5875c6/3c16e689f80aa2c6-r3
