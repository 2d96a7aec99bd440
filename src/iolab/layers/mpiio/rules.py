"""The ROMIO guides' rule of thumb (layers/rule.py): fewer aggregators than nodes when
collective buffering is on, so that some nodes' data all goes through another node's
aggregator (and its one file-system client)."""

from __future__ import annotations

from ..rule import Clear, Finding, Limit, Rule
from .hints import PREFIX


def _fewer(v, rule):
    mode = v.param(f"{PREFIX}romio_cb_write")
    if mode == "disable":
        return Clear("collective buffering of writes was switched off (romio_cb_write disable)")
    nodes = v.param("scale.nodes", "nodes") or 1
    if nodes < 2:
        return Clear("one node: any aggregator is on it")
    collective = v.optional("collective_writes")
    if collective == 0:
        return Clear("no collective MPI-IO write: collective buffering had nothing to gather")
    if collective is None and mode != "enable":
        v("collective_writes")          # not recorded: whether buffering was on cannot be said
    aggregators = v("aggregators_in_effect")
    what = f"{aggregators:.0f} aggregator(s) in effect for {nodes} nodes"
    if aggregators / nodes < rule.limit("per_node"):
        return Finding(f"{what}: {nodes - aggregators:.0f} node(s) wrote through another's")
    return Clear(what)


RULES = (
    Rule("aggregators_below_nodes", "fewer aggregators than nodes",
         "CSC, 'How to achieve better I/O performance on Lustre' (Mahti): one MPI-IO aggregator "
         "per compute node by default, two per node were faster; the CP2K post ('Parallelizing "
         "I/O operations with MPI, Part 2'), Table 1: on 8 nodes, 64 aggregators wrote 1161.6 "
         "MiB/s against 893.6 with Cray MPICH's default of 1 (though 2 wrote 175.3: the count is "
         "to be measured). Drishti's check_mpi_aggregator (insights M08-M10) flags the other "
         "side only, more aggregators than nodes",
         (Limit("per_node", 1.0, "aggregators per node", "aggregators in effect over the job's "
                "nodes, below it"),),
         "the aggregators the MPI library says it used (its printed hints, e.g. ROMIO's "
         "ROMIO_PRINT_HINTS) and the job's nodes; where romio_cb_write is not enable, whether "
         "the writes were collective: run with darshan: {enabled: true}",
         "with collective buffering on, fewer aggregators than nodes leave nodes whose data all "
         "crosses the network to another node's aggregator, and their file-system clients idle",
         _fewer),
)
