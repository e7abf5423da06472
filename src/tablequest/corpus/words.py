"""English stop words and question operators, dropped from LLM-free patterns and BM25 queries."""

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    did does done many much tell give list show whose whats
    """.split()
) | frozenset(
    # question operators: they say what to compute, not what the table contains
    """last first least highest lowest largest smallest biggest greatest top bottom next
    previous earliest latest longest shortest oldest newest older younger youngest more less
    fewer than part times difference average amount consecutive according listed named
    called also one either""".split()
)
