"""`argent tables`: tables and figures from evaluation JSON and run folders.

collect (inputs -> long frames), stats (CIs, paired differences, verdicts), paper (main and
ablation tables), claims, mechanism, probe, pretrained (the pretrained models' table), figures;
``argent.tables.run.run(options)`` builds them all, ``cli`` is the verb. Import each name from its
module: the package re-exports nothing.
"""
