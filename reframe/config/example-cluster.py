# A documented template for a real Slurm + Lustre cluster. Copy it to reframe/config/<site>.py,
# replace every value marked SITE, and run:
#   reframe -C reframe/config/<site>.py -c reframe/ -R -r -n <experiment>
# Site facts belong here (in the partition's extras['iolab']), never in experiments or tests.
from iolab.rfm.systems import general, in_allocation, logging, stage_dirs, storage

site_configuration = {
    'systems': [{
        'name': 'mycluster',                          # SITE
        'descr': 'Example Slurm + Lustre cluster',
        'hostnames': [r'login\d+\.mycluster'],        # SITE: regex of the login nodes
        'modules_system': 'lmod',                     # SITE: lmod | tmod4 | nomod ...
        **stage_dirs('mycluster'),
        # IOLAB_IN_ALLOCATION=1 (scripts/run --in-allocation, iolab submit): the cases run as
        # srun steps of the allocation ReFrame runs in (docs/campaigns.md, "Allocation mode")
        'partitions': [in_allocation({
            'name': 'compute',
            'descr': 'CPU nodes',
            'scheduler': 'slurm',                     # polls sacct; use 'squeue' without accounting
            'launcher': 'srun',
            'access': ['--partition=standard',        # SITE
                       '--account=myproject',         # SITE
                       '--qos=standard'],             # SITE (optional)
            'environs': ['site-mpi'],
            'max_jobs': 1,                            # cases of one experiment never overlap
            'features': ['iolab'],
            'time_limit': '1h',
            'resources': [
                # DataWarp burst buffer, used by experiments that write to `burst_buffer`.
                {'name': 'datawarp',
                 'options': ['#DW jobdw type=scratch capacity={capacity} access_mode=striped']},
            ],
            'extras': {
                'iolab': {
                    # Where each case gets its fresh directory: the Lustre scratch file system.
                    'scratch': '/lustre/scratch/$USER/iolab',   # SITE ($VARS expand in the job)
                    'cores_per_node': 128,                      # SITE
                    'profile': 'full',                          # experiments' published sizes
                    # How MPI-IO hints are passed and verified: mpich-romio, cray-mpich,
                    # openmpi-romio (Open MPI with --mca io romio321) or openmpi-ompio.
                    'mpi_flavour': 'cray-mpich',                # SITE
                    # A case that cannot run here (an absent benchmark...) fails the run.
                    'strict': True,
                },
            },
        })],
    }],
    'environments': [{
        'name': 'site-mpi',
        'modules': ['PrgEnv-gnu', 'cray-mpich'],      # SITE: what provides MPI (and the stack)
        'features': ['iolab', 'mpi'],
        'cc': 'cc', 'cxx': 'CC', 'ftn': 'ftn',
        'target_systems': ['mycluster'],
    }],
    'general': general(),
    'logging': logging(),
    'storage': storage(),
}
