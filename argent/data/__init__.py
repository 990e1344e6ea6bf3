"""Data: format readers (formats/), the bad-data policy, images and transforms, shards, loaders, and the
embedded hiershapes benchmark (hiershapes/)."""
