"""Lexical ranking: grep patterns (Eq. 1), the trigram index, BM25, tokens, literals and matched
rows.
"""
