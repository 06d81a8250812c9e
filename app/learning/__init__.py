"""Pure learning algorithms (rewards, reflection, mining, skills, policies): no I/O."""
