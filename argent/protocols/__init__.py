"""The evaluation protocols, one record each (``registry.PROTOCOLS``): its name, its ``benchmarks:`` entry type,
its run function, the kind of every metric it writes and their units, and the files of the embedded data set its
entries read. The evaluation (parsing an entry, running it), the tables (the range of each metric they read back)
and the results layout (the embedded paths of a ``dataset: hiershapes`` entry) all read it; ``kinds`` is the
vocabulary of ranges the records use. Torch-free and on the shared floor, below the layout: the workflow reads it
while it parses. Import each name from its module: the package re-exports nothing.
"""
