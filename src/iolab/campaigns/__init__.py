"""What runs experiments: a run continued until every planned job is ok (`iolab resume`), one
recorded case re-run (`iolab reproduce`), and searches (`iolab search`), each by starting
ReFrame on the jobs it chose (campaign.run_reframe) with a continuation file the runner reads
(rfm/continuation.py). Above rfm/ (whose file format it writes) and analysis/ (which compares
what it measured); present/ renders its answers."""
