"""KG-specialised small models: supervision for every ranked decision, and LoRA training.

- :mod:`kg_agents.specialist.teacher`: the teacher that knows each decision's right options from the
  gold paths, and records the decisions a method meets;
- :mod:`kg_agents.specialist.train`: ``kg-agents train specialist``, one LoRA adapter for every role;
- the adapter it writes is used through :mod:`kg_agents.llm.adapters` (``--model local:DIR``).
"""
