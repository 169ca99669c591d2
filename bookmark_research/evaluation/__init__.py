"""Research evaluation: score research runs against a suite's gold answers and supplied labels.

A pure computation over supplied data (:func:`bookmark_research.evaluation.evaluate.evaluate`): it runs
no model and no provider and invents no label; a missing annotation gives ``null``, never 0.
"""
