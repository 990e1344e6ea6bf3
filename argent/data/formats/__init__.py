"""One reader per real data format: grounded/plain shards, image folders, retrieval captions, SugarCrepe,
HierarCaps."""
