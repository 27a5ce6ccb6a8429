"""The schema of ``scaffold.yaml``. Unknown keys are rejected everywhere."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from live_swe.contracts.model import Contract


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScaffoldLimits(_Strict):
    """Budgets a scaffold asks for; the kernel only ever applies them to tighten its own."""

    step_limit: int | None = Field(default=None, ge=1)
    cost_limit: float | None = Field(default=None, gt=0)  # 0 would mean "no cost budget": not the scaffold's to ask
    wall_time_limit: float | None = Field(default=None, gt=0)
    command_timeout: float | None = Field(default=None, gt=0)
    max_format_errors: int | None = Field(default=None, ge=1)


class Truncation(_Strict):
    max_chars: int = Field(default=10000, ge=200)
    head_chars: int = Field(default=5000, ge=0)
    tail_chars: int = Field(default=4000, ge=0)

    @model_validator(mode="after")
    def _head_and_tail_fit(self) -> Truncation:
        if self.head_chars + self.tail_chars > self.max_chars:
            raise ValueError("head_chars + tail_chars must not exceed max_chars")
        return self


class Reflection(_Strict):
    enabled: bool = True
    every: int = Field(default=1, ge=1)


class ContextPolicy(_Strict):
    keep_last_observations: int | None = Field(default=None, ge=1)


class RepoMapPolicy(_Strict):
    enabled: bool = True
    token_budget: int = Field(default=1024, ge=0)


class PromptFiles(_Strict):
    system: str = "system.j2"
    instance: str = "instance.j2"
    observation: str = "observation.j2"
    format_error: str = "format_error.j2"
    reflection: str = "reflection.j2"


class ScaffoldPolicy(_Strict):
    version: Literal[1] = 1
    action_format: Literal["text", "tool_call"] = "text"
    limits: ScaffoldLimits = ScaffoldLimits()
    truncation: Truncation = Truncation()
    reflection: Reflection = Reflection()
    context: ContextPolicy = ContextPolicy()
    repo_map: RepoMapPolicy = RepoMapPolicy()
    prompts: PromptFiles = PromptFiles()
    tools_dir: str = "tools"
    hooks: str | None = "hooks.py"
    contract: Contract | None = None  # rules the scaffold adds to the run's; it can never remove one
