# Shared pieces of the shipped ReFrame configurations. Site facts live in each system's config.
# (No `import reframe` here: ReFrame must not mistake config files for test files.)
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ReFrame's own output (stage dirs, logs, reports); iolab's results go to results/.
OUTPUT = os.environ.get('IOLAB_RFM_OUTPUT', os.path.join(ROOT, 'reframe', 'output'))
os.makedirs(OUTPUT, exist_ok=True)

# Open MPI refuses to run as root unless told; only set these when we are root.
RUN_AS_ROOT = ([['OMPI_ALLOW_RUN_AS_ROOT', '1'], ['OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', '1']]
               if os.geteuid() == 0 else [])

general = [{
    'report_file': os.path.join(OUTPUT, 'reports', 'run-report-{sessionid}.json'),
}]

logging = [{
    'level': 'debug',
    'handlers': [
        {'type': 'stream', 'name': 'stdout', 'level': 'info', 'format': '%(message)s'},
        {'type': 'file', 'name': os.path.join(OUTPUT, 'reframe.log'),
         'level': 'debug', 'format': '[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s',
         'append': True},
    ],
    'handlers_perflog': [{
        'type': 'filelog',
        'prefix': '%(check_system)s/%(check_partition)s',
        'basedir': os.path.join(OUTPUT, 'perflogs'),
        'level': 'info',
        'format': ('%(check_job_completion_time)s|%(check_info)s|%(check_case)s|'
                   '%(check_repetition)s|%(check_perfvalues)s'),
        'format_perfvars': '%(check_perf_var)s=%(check_perf_value)s %(check_perf_unit)s|',
        'append': True,
    }],
}]


def stage_dirs(name):
    return {'stagedir': os.path.join(OUTPUT, name, 'stage'),
            'outputdir': os.path.join(OUTPUT, name, 'output')}
