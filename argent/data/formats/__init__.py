"""One reader per real data format: grounded/plain shards, image folders, retrieval captions (COCO and
Karpathy JSON: ``coco_karpathy``), SugarCrepe, HierarCaps."""
