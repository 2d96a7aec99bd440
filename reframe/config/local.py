# `local`: the embedded default. This machine, no scheduler, Open MPI's mpirun.
#   reframe -C reframe/config/local.py -c reframe/ -R -r -n quickstart
# Scratch root: IOLAB_SCRATCH (default /tmp/iolab-scratch). Each case writes in a fresh
# directory below it. Profile: IOLAB_PROFILE overrides the `local` default below.
import importlib.util
import os


def _load_common():
    # By path, not via sys.path: ReFrame pops sys.path entries by position while loading configs.
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'common.py')
    spec = importlib.util.spec_from_file_location('iolab_rfm_config_common', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


common = _load_common()

site_configuration = {
    'systems': [{
        'name': 'local',
        'descr': 'This machine, no scheduler (iolab embedded default)',
        'hostnames': ['.*'],
        'modules_system': 'nomod',
        **common.stage_dirs('local'),
        'partitions': [{
            'name': 'default',
            'descr': 'Local processes launched with mpirun',
            'scheduler': 'local',
            'launcher': 'mpirun',
            'environs': ['openmpi'],
            # One job at a time: cases of one experiment must not measure each other.
            'max_jobs': 1,
            'features': ['iolab'],
            'env_vars': common.RUN_AS_ROOT,
            'extras': {
                'iolab': {
                    'scratch': os.environ.get('IOLAB_SCRATCH', '/tmp/iolab-scratch'),
                    'cores_per_node': os.cpu_count(),
                    'profile': 'local',
                    'mpi_flavour': 'openmpi-ompio',
                },
            },
        }],
    }],
    'environments': [{
        'name': 'openmpi',
        'features': ['iolab', 'mpi'],
        'cc': 'mpicc', 'cxx': 'mpicxx', 'ftn': 'mpif90',
    }],
    'general': common.general,
    'logging': common.logging,
}
