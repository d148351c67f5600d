"""Reading checkpoints and fitting their weights to a model.

* :mod:`.safe_loading`: the allow-list that keeps torch's ``weights_only`` loader on;
* :mod:`.fitting`: :func:`check_fits`, the one check that a state dict fits a model;
* :mod:`.unilmv2_init`: a ``unilmv2`` model from a pre-trained or converted checkpoint;
* :mod:`.palm_init`: a ``palm`` model from a ``palm`` checkpoint, or its encoder from a ``unilmv2`` one;
* :mod:`.stage_init`: PALM's stage 2 from a stage-1 checkpoint;
* :mod:`.upgrade`: the rule ``unilmv2`` applies to every checkpoint it loads;
* :mod:`.converted`: the fitting step of the Hugging Face conversion.
"""
