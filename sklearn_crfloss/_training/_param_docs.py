"""The estimator's training parameters, documented once.

The text of ``CRFTagger``'s ``solver``, ``average`` and ``eta0``
parameters, of its early-stopping parameters and of its validation
attributes, put into its docstring by
:func:`~sklearn_crfloss._utils.fill_doc`.
"""

__all__ = ["TRAINING_PARAMS_DOC"]

TRAINING_PARAMS_DOC = dict(
    solver_parameters="""solver : str, solver object, list or None, default=None
    Training procedure: a name registered in
    :data:`sklearn_crfloss.solvers.SOLVERS`, a solver object such as
    ``SGD(batch_size=16)`` (:class:`~sklearn_crfloss.solvers.BaseSolver`;
    used with its own parameters: ``average``, ``eta0`` and
    ``random_state`` of the estimator apply to names only), or a list of
    stages run one after the other, each from the last one's result (a
    :class:`~sklearn_crfloss.solvers.Schedule`): a solver or a pair
    ``(solver, n_iter)``, e.g. ``[('sgd', 10), 'quickprop']``; a stage
    without ``n_iter`` runs ``max_iter``. None: the loss's own choice
    (:func:`~sklearn_crfloss.solvers.default_solver`): ``'lbfgs'``
    (L-BFGS) for smooth losses, ``'owlqn'`` (OWL-QN) for them with
    ``prior='l1'``, Suzuki et al.'s schedule (ten SGD epochs from zero
    only, then ``'quickprop'``) for ``'mce'`` and ``'mce_f'``, ``'sgd'``
    for ``'max_margin'``, the online rules ``'perceptron'`` and
    ``'mira'`` for those losses (which accept no other). ``'rprop'`` and
    ``'quickprop'`` are full-batch first-order solvers without line
    search, for nonsmooth and nonconvex losses. ``'sgd'`` (every loss
    but the perceptron and MIRA; L2 or no prior): Bottou's SGD, one
    sequence per step (a small minibatch for the losses without a
    compiled per-sequence gradient), shuffled with ``random_state``,
    step ``eta0 / (1 + eta0 lambda t) ** power``,
    ``lambda = 1 / (C n_sequences)``, ``max_iter`` epochs; it trains the
    same parameters as L-BFGS. The perceptron and MIRA train a weight
    for every label of every attribute they see (``all_possible_states``
    does not apply). See :doc:`/user_guide/solvers`.
average : bool or int, default=True
    Online trainers: return the average of the parameters over the
    steps instead of the last ones (averaged perceptron; averaged SGD,
    Bottou's crfasgd). For ``solver='sgd'`` averaging starts after one
    epoch, or, for an int ``k``, once ``k`` sequences have been seen
    (as ``SGDClassifier(average=k)``); the perceptron and MIRA average
    over all steps. Ignored by batch solvers.
eta0 : 'auto' or float, default='auto'
    First step size of ``solver='sgd'``. ``'auto'``: calibrated on
    1,000 training sequences (Bottou's crfsgd: the constant step that
    lowers a sample's objective most after one pass; halved without
    averaging).""",
    early_stopping_parameters="""early_stopping : bool, default=False
    Hold out ``validation_fraction`` of the training sequences (drawn
    with ``random_state``), score them after every iteration (epoch) of
    any solver and stop when the score has not improved for
    ``n_iter_no_change`` iterations; the parameters of the best score
    are kept (``validation_scores_``, ``best_validation_score_``). The
    held-out sequences are vectorised with the others but not trained
    on; ``fit(X, y, X_val=..., y_val=...)`` scores a given validation
    set instead. Not applied to the ``init='cll'`` stage. Without early
    stopping, ``fit(X, y, X_val=..., y_val=...)`` records the scores of
    the validation set and changes nothing else.
validation_fraction : float, default=0.1
    Share of the training sequences held out with ``early_stopping``,
    in (0, 1).
n_iter_no_change : int or None, default=None
    Iterations (epochs) without an improvement of the held-out score by
    more than ``tol`` (relative, at least ``tol`` absolute) before early
    stopping. None: the solver's own patience
    (:attr:`~sklearn_crfloss.solvers.SolverTags.n_iter_no_change`),
    measured on CoNLL-2000 and CoNLL-2002 subsets as the shortest from
    which a longer one changes the test F1 of the model kept by less
    than 0.1 point on average: 50 iterations for L-BFGS and OWL-QN
    (one iteration is one step, and the held-out score can stay flat
    for 40 of them before it rises again), 40 for Rprop and QuickProp,
    15 epochs for SGD (more than its default ``max_iter``: early
    stopping then keeps the best epoch), 5 for the perceptron and MIRA.
    A shorter patience stops sooner at some cost in F1 (``20`` with
    L-BFGS: about half the iterations, up to 0.2 F1 point lower).
scoring : {None, 'f1', 'accuracy', 'loss'}, default=None
    Held-out score of early stopping: segment F1 (conlleval) of the
    decoded sequences (``decoder``, ``constraints``), their token
    accuracy, or minus the training loss on them. None: ``'f1'`` when
    the training labels contain chunks (``B-``/``I-``... prefixes),
    else ``'accuracy'`` (segment F1 is 0 at every iteration on labels
    without chunks, such as POS tags).""",
    validation_attributes="""validation_scores_ : list of float or None
    The held-out score (``scoring``) after each iteration (epoch) of the
    training of ``loss``, all its stages: of the random hold-out of
    ``early_stopping``, or of ``fit``'s ``X_val``; None without either.
best_validation_score_ : float or None
    The highest of ``validation_scores_`` (with early stopping, that of
    the parameters kept; without, the last parameters are kept).""",
)
