"""A conversation's state: model-retry budgets and circuit breakers, per tool, and
the model steps the runner consults before and after a call (``_steps``).

The one semantics both stores follow (``toolguard.stores``). May import: ``policy``,
``toolguard._logging`` and the bottom modules. Private: ``Session`` (the public
face of a conversation) is ``toolguard._session``'s.
"""
