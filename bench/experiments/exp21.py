"""Stopword lists (stop 17): the shipped list (73 function words) against it plus question
words (how, many, much, whether, also) and against the union with NLTK's 179-word English
list (which adds all, any, each, both, few, more, most, other, some, only, same, very,
about, after, before, over, under, up, down, out, off, ...)."""
from common import *
from sproutrag.search.lexical import LeafTerms, bm25_leaves
NLTK = set("""i me my myself we our ours ourselves you your yours yourself yourselves he him his
himself she her hers herself it its itself they them their theirs themselves what which who
whom this that these those am is are was were be been being have has had having do does did
doing a an the and but if or because as until while of at by for with about against between
into through during before after above below to from up down in out on off over under again
further then once here there when where why how all any both each few more most other some
such no nor not only own same so than too very s t can will just don should now""".split())
QUESTION = {"how", "many", "much", "whether", "also"}
LISTS = {"shipped": lex.STOPWORDS, "+ question words": lex.STOPWORDS | QUESTION,
         "+ NLTK": lex.STOPWORDS | NLTK}
for name, split, feats, queries, qv, texts in each_split():
    P = []
    for q, keys, cos, lt, lh in query_leaves(feats, queries, qv, texts, leaf_headings(feats, texts)):
        row = [keys, cos]
        for words in LISTS.values():
            lex.STOPWORDS = words
            row.append(bm25_leaves(q["query"], [LeafTerms.of(lt, lh)])[0])
        lex.STOPWORDS = LISTS["shipped"]
        P.append(tuple(row))
    def run(fn): return ranked(P, feats, queries, fn)
    base = run(lambda c, *b: z(c) + z(b[0]))
    report(f"{name}-{split} shipped stopwords", base)
    for i, label in enumerate(list(LISTS)[1:], 1):
        report(f"{name}-{split} stopwords {label}", run(lambda c, *b: z(c) + z(b[i])), base)
