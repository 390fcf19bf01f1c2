"""Secrets among a server's options: kept out of every command line, which any user of the
machine can read (``ps``, ``/proc/PID/cmdline``).

``start()`` gives them to the server on its standard input, as configuration lines (the server
reads ``-`` as a configuration file); ``redis-bf-server`` refuses them on its own command line,
where they would already be readable, and says where to put them instead.
"""

from __future__ import annotations

# Where redis-bf-server and the tour take a password from.
PASSWORD_VARIABLE = "REDIS_BF_PASSWORD"
# Server options whose one value is a secret.
SECRET_OPTIONS = (
    "--requirepass",
    "--masterauth",
    "--tls-key-file-pass",
    "--tls-client-key-file-pass",
)
# An ACL user (--user NAME RULE ...): its rules may hold a password (">pw") or a password's hash
# ("#hex"), so all of its words go where the secrets go.
USER_OPTION = "--user"
SECRET_RULE_PREFIXES = (">", "#")


def split(server_args: list[str]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The server options without their secrets, and the secrets: (name, values) for each, the
    name without its dashes."""
    kept: list[str] = []
    secrets: list[tuple[str, list[str]]] = []
    at = 0
    while at < len(server_args):
        word = server_args[at]
        if word in SECRET_OPTIONS:
            secrets.append((word[2:], server_args[at + 1 : at + 2]))
            at += 2
        elif word == USER_OPTION:
            words = _user_words(server_args, at)
            secrets.append((word[2:], words))
            at += 1 + len(words)
        else:
            kept.append(word)
            at += 1
    return kept, secrets


def config_lines(secrets: list[tuple[str, list[str]]]) -> bytes:
    """The secrets as the server's configuration lines, each value quoted and escaped."""
    return "".join(_config_line(name, values) for name, values in secrets).encode()


def _config_line(name: str, values: list[str]) -> str:
    quoted = (
        "".join(
            "\\" + char if char in '"\\' else char if " " <= char <= "~" else f"\\x{ord(char):02x}"
            for char in value
        )
        for value in values
    )
    return " ".join([name, *(f'"{each}"' for each in quoted)]) + "\n"


def refusal(server_args: list[str]) -> str | None:
    """Why ``redis-bf-server`` refuses its server options, where one of them is a secret: one
    line; None where none is."""
    for at, word in enumerate(server_args):
        if word == "--requirepass":
            return (
                f"{word} on the command line can be read by every user of this machine (ps): "
                f"set {PASSWORD_VARIABLE} in the environment instead"
            )
        user_secret = word == USER_OPTION and any(
            rule.startswith(SECRET_RULE_PREFIXES) for rule in _user_words(server_args, at)
        )
        if word in SECRET_OPTIONS or user_secret:
            return (
                f"{word} on the command line can be read by every user of this machine (ps): "
                "start the server yourself with a configuration file "
                '(loadmodule "$(redis-bf-module-path)")'
            )
    return None


def _user_words(server_args: list[str], at: int) -> list[str]:
    """The words of the ``--user`` option at ``at``: up to the next option."""
    words = []
    for word in server_args[at + 1 :]:
        if word.startswith("--"):
            break
        words.append(word)
    return words
