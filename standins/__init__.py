"""Local stand-ins for third-party websites: the demo shop (``demo_site``), the jobs board
(``job_board_site``) and the onboarding corpus (``plain_sites``).

Test and demo sites only: the harness and the benchmarks serve them on loopback; the
platform never imports them, and each imports nothing of ours (``.importlinter``).
"""
