"""Results: records and manifests typed, written whole, chained and checked; runs found,
read and continued. Everything after a run reads results through `Run`."""
