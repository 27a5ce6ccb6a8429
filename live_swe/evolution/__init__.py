"""Live self-evolution: the session's scaffold history, the gates, the hook worker, the tool library.

The kernel plugs :class:`live_swe.evolution.guard.GatedScaffold` (the ``ScaffoldGuard``) and
:class:`live_swe.evolution.hook_client.HookClient` (the ``Hooks``) into the step loop. Everything
the agent writes (tools, hooks) runs outside the kernel process: tools in the environment, hooks
in an isolated worker process.
"""
