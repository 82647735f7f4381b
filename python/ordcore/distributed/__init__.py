"""Scale-out on Ray: ``ordcore.distributed``.

* :class:`ShardedIndex`: a :class:`~ordcore.ann.BQGraphIndex` split over Ray actors by a
  hash of the ids, searched by every shard and merged exactly by ``(distance, id)``.
* :func:`pack_dataset`: sequence packing of a ``ray.data.Dataset``, globally (identical to
  :func:`ordcore.packing.pack`) or per block.

Needs Ray (``pip install 'ordcore[ray]'``) and a running cluster (``ray.init()``); ``import
ordcore`` never imports Ray, only ``import ordcore.distributed`` does. See
``docs/scale-out.md`` for multi-node use and a capacity plan.
"""

from __future__ import annotations

from ordcore.distributed._ray import ray_module

ray_module()  # a clear MissingDependencyError when Ray is absent

from ordcore.distributed.index import ShardedIndex, merge_topk  # noqa: E402
from ordcore.distributed.packing import pack_dataset, split_ranks  # noqa: E402
from ordcore.packing import RankSplit, equalize_ranks

__all__ = ["ShardedIndex", "merge_topk", "pack_dataset", "split_ranks", "equalize_ranks", "RankSplit"]
