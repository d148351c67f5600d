from .ae_par import AEPARCriterion  # noqa: F401
