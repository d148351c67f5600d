"""The one place the plugin's tasks prepare a model config before building a model."""

from ..models.architecture_presets import prepare_model_config


class PreparedModelTask:
    """Mixin for every task of the plugin (first among its task bases): ``build_model`` runs
    :func:`prepare_model_config` once, then :meth:`build_prepared_model`.

    A task overrides :meth:`build_prepared_model`, never ``build_model``, so it reads model options that
    the architecture's presets have filled and cannot skip or repeat the preparation. Mixins that wrap the
    whole build (``RougeValidationTask``) may still override ``build_model``.
    """

    def build_model(self, cfg, from_checkpoint=False):
        prepare_model_config(cfg, from_checkpoint)
        return self.build_prepared_model(cfg, from_checkpoint)

    def build_prepared_model(self, cfg, from_checkpoint=False):
        """The task's build on a prepared config; by default the next base's ``build_model``."""
        return super().build_model(cfg, from_checkpoint)
