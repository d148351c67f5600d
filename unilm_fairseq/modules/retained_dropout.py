"""Dropout that fairseq's ``--retain-dropout`` keeps on at inference."""


class RetainedDropout:
    """``--retain-dropout`` and ``--retain-dropout-modules`` as fairseq's ``FairseqDropout`` reads them.

    fairseq's ``prepare_for_inference_`` calls ``make_generation_fast_`` on every module before putting the
    model in eval mode; a module named there (by class name, or every module when none is named) keeps its
    dropout at inference.
    """

    apply_during_inference = False

    def make_generation_fast_(self, name=None, retain_dropout=False, retain_dropout_modules=None, **kwargs):
        named = retain_dropout_modules is None or type(self).__name__ in retain_dropout_modules
        if retain_dropout and named:
            self.apply_during_inference = True

    def dropout_on(self) -> bool:
        return self.training or self.apply_during_inference
