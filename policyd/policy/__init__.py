"""The policy as data: rule files, their schema, compilation to durable-rules and evaluation."""
