"""``bot keys derive`` and ``bot keys new``: API credentials of the configured key, and new keys in
encrypted keystore files.

Invariant: a secret prints only when asked for (``--show-secrets``, ``--export``), and every secret
made or fetched is registered for redaction first, so no log or error line ever shows it.
"""

from __future__ import annotations

import shlex
import sys

from bot.commands.session import EXIT_OK, CommandError, Session
from bot.commands.venue import SIGNER, on_venue
from bot.ops.logging import register_secret


def cmd_keys_derive(s: Session) -> int:
    from bot.ops.secrets import ENV_API_KEY, ENV_API_PASSPHRASE, ENV_API_SECRET

    a = s.args

    async def derive(venue):
        async with venue.clob() as clob:
            return venue.wallet, await clob.create_or_derive_api_key(a.nonce)

    wallet, creds = on_venue(s, derive, SIGNER)
    secret, passphrase = creds.secret.reveal(), creds.passphrase.reveal()
    register_secret(secret)
    register_secret(passphrase)
    out = sys.stdout
    if a.export:
        out.write(f"export {ENV_API_KEY}={shlex.quote(creds.api_key)}\n")
        out.write(f"export {ENV_API_SECRET}={shlex.quote(secret)}\n")
        out.write(f"export {ENV_API_PASSPHRASE}={shlex.quote(passphrase)}\n")
        return EXIT_OK
    hidden = "*** (--show-secrets prints it)"
    out.write(f"address     {wallet.address}\n")
    out.write(f"apiKey      {creds.api_key}\n")
    out.write(f"secret      {secret if a.show_secrets else hidden}\n")
    out.write(f"passphrase  {passphrase if a.show_secrets else hidden}\n")
    return EXIT_OK


def cmd_keys_new(s: Session) -> int:
    """A fresh key, encrypted with a passphrase from BOT_KEYSTORE_PASSPHRASE or the terminal."""
    from bot.ops.keystore import passphrase, write_keystore
    from bot.venue.eip712 import Wallet, new_private_key

    a = s.args
    if a.kdf == "scrypt" and a.work is not None and a.work & (a.work - 1):
        raise CommandError(f"--work {a.work}: scrypt n must be a power of two")
    key = new_private_key()
    register_secret(key.hex())
    register_secret("0x" + key.hex())
    write_keystore(a.file, key, passphrase(confirm=True), a.kdf, a.work)
    sys.stdout.write(f"address   {Wallet('0x' + key.hex()).address}\nkeystore  {a.file}\n"
                     f'use it with [secrets] source = "keystore", file = "{a.file}"\n')
    return EXIT_OK
