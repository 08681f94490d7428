"""Training: the stages of a fit, its components, partial fit, fitted state.

``_components`` resolves the loss, prior and solver; ``_stages`` runs the
initialisation and the loss stages; ``_fit_args`` checks ``fit``'s extra
arguments (validation sets); ``_partial_fit`` keeps the online state across
``partial_fit`` calls; ``_fitted_state`` publishes the fitted attributes in
one assignment; ``_tag_scheme`` converts label schemes; ``_param_docs`` documents the
training parameters; ``_verbose`` prints.
"""

from ._components import check_token_weight_use, resolve_components
from ._fit_args import FIT_DOC, check_validation_set, keyword_only_after_y, validation_score
from ._fitted_state import fitted_state, snapshot_methods
from ._param_docs import TRAINING_PARAMS_DOC
from ._partial_fit import PartialFitMixin
from ._stages import (early_stopping_scoring, StageSettings, train_stages, warn_if_iob1_segments,
                      warn_if_unscaled)
from ._tag_scheme import (TAG_SCHEME_DOC, refuse_tag_scheme, to_model_labels, to_training_labels,
                          to_user_labels)
from ._verbose import print_header

__all__ = ["FIT_DOC", "PartialFitMixin", "StageSettings", "TAG_SCHEME_DOC", "TRAINING_PARAMS_DOC",
           "check_token_weight_use",
           "check_validation_set", "early_stopping_scoring", "keyword_only_after_y",
           "fitted_state", "print_header", "refuse_tag_scheme", "resolve_components",
           "snapshot_methods",
           "to_model_labels", "to_training_labels", "to_user_labels", "train_stages",
           "validation_score", "warn_if_iob1_segments", "warn_if_unscaled"]
