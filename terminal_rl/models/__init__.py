"""Model helpers that need no training framework (the tiny offline model)."""
