"""What the tables job is asked to write, declared before any run: the ``tables:`` section of the workflow config
(``section``), the claims file and its role map (``claims``; the declarations a verdict needs besides its test,
``declarations``) and the names of the tables and their files (``outputs``).

Below the plan that reads them (it checks the claims file at DAG build and decides which tables the job writes,
argent/plan/table_choice.py) and the tables that follow them; torch- and polars-free (the Snakefile reads them
while it parses). Import each name from its module: the package re-exports nothing.
"""
