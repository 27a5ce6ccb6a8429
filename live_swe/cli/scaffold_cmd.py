"""``live-swe scaffold promote``: make a validated scaffold the default for later sessions."""

from __future__ import annotations

import sys

import typer

from live_swe.cli.common import friendly

app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode=None)


@app.command("promote")
@friendly
def promote(
    ref: str = typer.Argument(..., help="archive:NODE, path:DIR, session:ID (or seed to go back)."),
    force: bool = typer.Option(False, "--force", help="Promote without a recorded 'better' validation."),
) -> None:
    """Write `scaffold: REF` into the user's config, if a validation found REF better."""
    from godel.promote import promote as do_promote
    from live_swe.config import config_path

    done = do_promote(ref, force=force)
    if done.validation:
        v = done.validation
        why = (f"validation {v['id']}: {v.get('candidate_resolved')}/{v.get('n')} vs "
               f"{v.get('baseline_resolved')}/{v.get('n')} against {v.get('against')}, p={v.get('p_value'):.4g}")
    else:
        why = "forced, without a 'better' validation" if done.forced else "the shipped seed scaffold"
    print(f"default scaffold is now {done.ref} ({why}); written to {config_path()}", file=sys.stderr)
    print(done.ref)
