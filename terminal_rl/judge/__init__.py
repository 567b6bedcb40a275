"""The LLM judge: grades *how* an agent worked (not the outcome) with a versioned rubric, through one
run-wide service that owns the cache, the budget, the rate limit and the hot-switchable backend."""
