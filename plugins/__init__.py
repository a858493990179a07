"""Built-in plugins of bitextforge. Each module registers its components through the
``bitextforge`` entry-point group, exactly as a third-party plugin does.

:data:`COMPONENTS` lists what each built-in plugin registers, so the registry imports a built-in
plugin only when a command needs one of its components (a run imports the plugins its recipe
names; ``plugins``, ``describe`` and ``--help`` import them all). Third-party plugins carry no such
list and are imported at start-up as before. ``tests/test_registry.py`` checks the list against
what the plugins register.
"""

#: entry-point value -> component kind -> the names that plugin registers
COMPONENTS: dict[str, dict[str, tuple[str, ...]]] = {
    "bitextforge.plugins.basic_filters": {
        "filter": ("column.v1", "combine.v1", "dedupe.v1", "length.v1", "length_ratio.v1"),
        "trainer": ("combine_model.v1",)},
    "bitextforge.plugins.bilingual": {
        "filter": ("bilingual_similarity.v1",), "evaluator": ("alignment_recovery.v1",),
        "trainer": ("bilingual_model.v1", "mlp_similarity_model.v1")},
    "bitextforge.plugins.cleaners": {
        "cleaner": ("fix_mojibake.v1", "html.v1", "moses_punctuation.v1", "unicode.v1",
                    "unwrap_quotes.v1")},
    "bitextforge.plugins.erg": {"splitter": ("nichols_split.v1",), "paraphraser": ("erg.v1",)},
    "bitextforge.plugins.evaluation": {
        "evaluator": ("bleu.v1", "chrf.v1", "corpus_stats.v1", "label_auc.v1", "mrpc.v1",
                      "paraphrastic_embeddings.v1", "score_correlation.v1")},
    "bitextforge.plugins.hardrules": {
        "filter": ("alphabet_ratio.v1", "average_word_length.v1", "bad_encoding.v1",
                   "breadcrumbs.v1", "character_script.v1", "escaped_unicode.v1",
                   "glued_words.v1", "hardrules.v1", "html_tags.v1", "identical.v1", "literals.v1",
                   "longest_word.v1", "nonzero_numerals.v1", "only_numbers.v1", "only_symbols.v1",
                   "parentheses.v1", "regexp.v1", "repeated_words.v1", "repetition.v1",
                   "space_noise.v1", "terminal_punctuation.v1", "titles.v1", "too_long.v1",
                   "too_short.v1", "unicode_noise.v1", "urls.v1")},
    "bitextforge.plugins.lexical": {
        "filter": ("lexical_coverage.v1", "lexical_translation.v1", "pair_classifier.v1",
                   "segmented.v1"),
        "generator": ("lexicon_translate.v1",),
        "trainer": ("lexical_translation_model.v1", "pair_classifier_model.v1")},
    "bitextforge.plugins.nmt": {
        "paraphraser": ("backtranslate.v1", "roundtrip.v1"), "generator": ("translate.v1",),
        "filter": ("nmt_logprob.v1",), "evaluator": ("expansion_curve.v1", "train_and_test.v1"),
        "trainer": ("nmt_model.v1",)},
    "bitextforge.plugins.quality": {
        "filter": ("embedding_cosine.v1", "embedding_qe.v1", "kenlm_perplexity.v1", "language_id.v1",
                   "multilingual_embedding.v1", "ngram_overlap.v1", "paraphrase_score.v1",
                   "reference_classifier.v1", "sentence_bleu.v1", "sentence_chrf.v1",
                   "sentence_regressor.v1", "translation_cost.v1"),
        "trainer": ("embedding_qe_model.v1", "kenlm_model.v1", "reference_classifier_model.v1",
                    "sentence_regressor_model.v1", "word_vectors.v1")},
    "bitextforge.plugins.weighters": {
        "weighter": ("distributed.v1", "first.v1", "sentence_weights.v1", "varying.v1")},
}
