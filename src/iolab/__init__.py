"""iolab: reproducible parallel I/O experiments (IOR, fio, ...) driven by ReFrame."""

__version__ = "0.1.0"
