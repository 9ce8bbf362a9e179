import type { Access, CredentialMemo } from './access.ts';
import type { Caller } from './caller.ts';
import { errors, type ServiceError } from './errors.ts';
import type { Budget, Protection, RateGate } from './rate/gate.ts';

export type { Budget, Protection } from './rate/gate.ts';

export type Admitted = { caller: Caller; headers: Record<string, string> };
export type Refused = { error: ServiceError; headers: Record<string, string> };

export type Guard = {
  /**
   * Authenticates the bearer key, then counts the request against the key's budget (`requests`
   * unless given). `memo`: the connection's credential memo, when the transport keeps one.
   */
  admit(
    authorization: string | undefined,
    protection: Protection,
    budget?: Budget,
    memo?: CredentialMemo,
  ): Promise<Admission>;
};

export type Admission = { ok: true; value: Admitted } | { ok: false; refused: Refused };

/** One guard for REST and MCP: the same key check and the same budget on both surfaces. */
export function createGuard(access: Access, gate: RateGate): Guard {
  return {
    async admit(authorization, protection, budget, memo) {
      const caller = await access.authenticate(authorization, memo);
      if (!caller) return { ok: false, refused: { error: errors.unauthorized(), headers: {} } };
      const gated = await gate.check(caller.keyId, protection, budget);
      if (!gated.ok) return { ok: false, refused: { error: gated.error, headers: gated.headers } };
      return { ok: true, value: { caller, headers: gated.headers } };
    },
  };
}
