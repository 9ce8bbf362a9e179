import assert from 'node:assert/strict';
import { BEATS } from '../../config/beats.ts';
import type { SourceMessage } from '../../ingest/messages.ts';
import {
  askStatusSchema,
  calltrackerStatusSchema,
  researchStateSchema,
  TOKENS_PER_CALL_MAX,
} from '../../readmodels/schemas.ts';

/**
 * Checks, from the messages alone, that a generated data set exercises every rule the
 * generator promises. Reads the messages once, keeping per-project summaries.
 */

const DAY = 86_400_000;
const CHAINS = ['ethereum', 'base', 'solana', 'bsc', 'arbitrum'];

function host(website: string): string {
  const withScheme = /^[a-z]+:\/\//i.test(website) ? website : `https://${website}`;
  return new URL(withScheme).hostname.toLowerCase().replace(/^www\./, '');
}

export type CoverageOptions = {
  followerProvider: string;
  days: number;
  hotContract?: { chain: string; contract: string; count: number };
};

export function assertEveryRule(messages: Iterable<SourceMessage>, options: CoverageOptions): void {
  const epoch = Date.parse('2026-10-01T00:00:00Z');
  const end = epoch + options.days * DAY;
  let newest = -Infinity;
  let outOfOrder = 0;
  const ids = new Set<string>();

  // projects
  const sightings = new Map<string, { first: number; last: number; newest: number; fols: Set<number | null> }>();
  const handleClaims: { handle: string; projectId: string; at: number }[] = [];
  const currentHandle = new Map<string, string | null>();
  const withHandle = new Set<string>();
  const withoutHandle = new Set<string>();
  const kinds = new Set<string>();
  const contractChains = new Set<string>();
  const identityContracts = new Map<string, Set<string>>(); // contract → chains
  const identityContractProjects = new Map<string, Set<string>>(); // contract → projects
  const hosts = new Map<string, Set<string>>();
  let wwwUrl = 0;
  const linkTargets = new Map<string, Set<string>>(); // chain:contract → projects
  const dossierTokens = new Set<string>(); // chain:contract
  const rivalAt = new Map<string, number>();
  const rivalBefore = new Set<string>();
  const rivalAfter = new Set<string>();
  const dossierProjects = new Set<string>();
  let dossierWithOnchain = 0;
  let dossierWithoutOnchain = 0;
  let dossierWithToken = 0;
  let onchainAfterDossier = 0;
  const ctStatuses = new Set<string>();
  const ctHistory = new Set<boolean>();
  let followersObserved = 0;
  let followersAhead = 0;
  const votes = new Map<string, Map<string, string>>(); // project → voter → direction
  let flips = 0;
  let withdrawals = 0;
  const researchStates = new Set<string>();
  const askStatuses = new Set<string>();

  // calls
  const pnl = { fresh: 0, stale: 0, future: 0, none: 0 };
  const callTokens: { chain: string; contract: string }[] = [];
  let fullCalls = 0;
  let overLong = 0;
  const callUpdated = new Map<string, string[]>();
  const suppressed = new Set<string>();
  let restoredAfterSuppression = 0;
  let collected = 0;
  const beats = new Set<string>();
  let quiet = 0;
  let hotCalls = 0;

  for (const message of messages) {
    assert.equal(ids.has(`${message.type} ${message.id}`), false, `message ids are unique (${message.id})`);
    ids.add(`${message.type} ${message.id}`);
    const at = Date.parse(message.at);
    assert.ok(at >= epoch && at < end, `at ${message.at} inside the period`);
    if (at < newest) {
      // Only deliberately late sightings go back in time.
      assert.equal(message.type, 'project.sighted', `${message.type} ${message.id} goes back in time`);
      outOfOrder += 1;
    }
    newest = Math.max(newest, at);

    switch (message.type) {
      case 'project.sighted': {
        const d = message.data;
        const s = sightings.get(d.projectId);
        if (!s) {
          sightings.set(d.projectId, { first: at, last: at, newest: at, fols: new Set([d.fol ?? null]) });
          if (typeof d.handle === 'string') withHandle.add(d.projectId);
          else withoutHandle.add(d.projectId);
        } else {
          s.fols.add(d.fol ?? null);
          s.last = Math.max(s.last, at);
          s.newest = Math.max(s.newest, at);
        }
        if (d.handle !== undefined) {
          const h = d.handle === null ? null : d.handle.replace(/^@+/, '').toLowerCase();
          if (h !== null && currentHandle.get(d.projectId) !== h)
            handleClaims.push({ handle: h, projectId: d.projectId, at });
          currentHandle.set(d.projectId, h);
        }
        if (d.identity) {
          kinds.add(d.identity.kind);
          if (d.identity.kind === 'contract' && d.identity.contract && d.identity.chain) {
            contractChains.add(d.identity.chain);
            const chains = identityContracts.get(d.identity.contract) ?? new Set();
            chains.add(d.identity.chain);
            identityContracts.set(d.identity.contract, chains);
            const projects = identityContractProjects.get(d.identity.contract) ?? new Set();
            projects.add(d.projectId);
            identityContractProjects.set(d.identity.contract, projects);
            const key = `${d.identity.chain}:${d.identity.contract}`;
            linkTargets.set(key, (linkTargets.get(key) ?? new Set()).add(d.projectId));
          }
          if (d.identity.website) {
            const h = host(d.identity.website);
            hosts.set(h, (hosts.get(h) ?? new Set()).add(d.projectId));
            if (/^https?:\/\/www\./.test(d.identity.website)) wwwUrl += 1;
          }
        }
        break;
      }
      case 'rival.listed': {
        const id = message.data.projectId;
        if (rivalAt.has(id)) break;
        rivalAt.set(id, at);
        if (sightings.has(id)) rivalAfter.add(id);
        else rivalBefore.add(id);
        break;
      }
      case 'followers.observed':
        assert.equal(message.data.source, options.followerProvider);
        followersObserved += 1;
        if (Date.parse(message.data.checkedAt) > at) followersAhead += 1;
        break;
      case 'dossier.written': {
        dossierProjects.add(message.data.projectId);
        if (message.data.dossier.onchain) dossierWithOnchain += 1;
        else dossierWithoutOnchain += 1;
        const token = message.data.dossier.token;
        if (token?.contract && token.chain) {
          dossierWithToken += 1;
          const key = `${token.chain}:${token.contract}`;
          dossierTokens.add(key);
          linkTargets.set(key, (linkTargets.get(key) ?? new Set()).add(message.data.projectId));
        }
        break;
      }
      case 'onchain.checked':
        if (dossierProjects.has(message.data.projectId)) onchainAfterDossier += 1;
        break;
      case 'calltracker.checked':
        ctStatuses.add(message.data.status);
        ctHistory.add(message.data.historyComplete);
        break;
      case 'vote.cast': {
        const d = message.data;
        const standing = votes.get(d.projectId) ?? new Map<string, string>();
        const before = standing.get(d.voterId);
        if (before && before !== 'none' && d.direction !== 'none' && before !== d.direction) flips += 1;
        if (before && before !== 'none' && d.direction === 'none') withdrawals += 1;
        standing.set(d.voterId, d.direction);
        votes.set(d.projectId, standing);
        break;
      }
      case 'research.updated':
        researchStates.add(message.data.state);
        break;
      case 'ask.updated':
        askStatuses.add(message.data.status);
        break;
      case 'call.recorded': {
        const d = message.data;
        const updates = callUpdated.get(d.id) ?? [];
        updates.push(d.updatedAt);
        callUpdated.set(d.id, updates);
        assert.ok(d.tokens.length >= 1 && d.tokens.length <= TOKENS_PER_CALL_MAX);
        if (d.tokens.length === TOKENS_PER_CALL_MAX && d.thesisText.length >= 11_800) fullCalls += 1;
        if (d.thesisText.length > 12_000) overLong += 1;
        const p = d.caller.pnl;
        if (p === null) pnl.none += 1;
        else {
          const checked = Date.parse(p.checkedAt);
          if (checked > at) pnl.future += 1;
          else if (at - checked >= DAY) pnl.stale += 1;
          else pnl.fresh += 1;
        }
        for (const t of d.tokens) callTokens.push({ chain: t.chain, contract: t.contract });
        if (
          options.hotContract &&
          d.tokens.some((t) => t.chain === options.hotContract?.chain && t.contract === options.hotContract.contract)
        ) {
          hotCalls += 1;
        }
        break;
      }
      case 'call.suppressed':
        suppressed.add(message.data.callId);
        break;
      case 'call.restored':
        if (suppressed.has(message.data.callId)) restoredAfterSuppression += 1;
        break;
      case 'calls.collected':
        collected += 1;
        break;
      case 'pulse.published':
        beats.add(message.data.card.beat);
        if (message.data.card.status === 'quiet') quiet += 1;
        break;
    }
  }

  // Sightings over weeks with changing follower counts, and late ones.
  const longHistories = [...sightings.values()].filter((s) => s.last - s.first >= 7 * DAY && s.fols.size >= 3);
  assert.ok(longHistories.length >= 3, 'projects sighted over more than a week with changing follower counts');
  assert.ok(outOfOrder >= 1, 'a sighting older than one already sent');
  assert.ok(withHandle.size > 0 && withoutHandle.size > 0, 'projects with and without a handle');
  assert.deepEqual([...kinds].sort(), ['contract', 'website', 'x']);
  assert.deepEqual([...contractChains].sort(), [...CHAINS].sort(), 'contract identities on every chain');

  // A handle abandoned by one project, later claimed by another.
  const reclaimed = handleClaims.some((claim) => {
    const earlier = handleClaims.find(
      (c) => c.handle === claim.handle && c.projectId !== claim.projectId && c.at < claim.at,
    );
    return earlier !== undefined && currentHandle.get(earlier.projectId) !== claim.handle;
  });
  assert.ok(reclaimed, 'a handle abandoned by one project and claimed by another');

  assert.ok(
    dossierWithOnchain > 0 && dossierWithoutOnchain > 0 && dossierWithToken > 0,
    'dossiers with/without onchain, with a token',
  );
  assert.ok(sightings.size > dossierProjects.size, 'some projects without a dossier');
  assert.ok(onchainAfterDossier > 0, 'onchain.checked after a dossier');
  assert.deepEqual([...ctStatuses].sort(), [...calltrackerStatusSchema.options].sort());
  assert.deepEqual([...ctHistory].sort(), [false, true]);
  assert.ok(followersObserved > 0 && followersAhead >= 1, 'followers.observed, one checked after its at');
  assert.ok(rivalBefore.size > 0 && rivalAfter.size > 0, 'rival listings before and after our first sighting');
  assert.ok(flips > 0 && withdrawals > 0, 'votes that flip and are withdrawn');
  const crowded = [...votes.values()].some((standing) => [...standing.values()].filter((d) => d === 'up').length > 20);
  assert.ok(crowded, 'a project with more than 20 up-voters');
  assert.deepEqual([...researchStates].sort(), [...researchStateSchema.options].sort());
  assert.deepEqual([...askStatuses].sort(), [...askStatusSchema.options].sort());

  // Search fixtures.
  const twoChains = [...identityContracts.entries()].some(
    ([contract, chains]) => chains.size >= 2 && (identityContractProjects.get(contract)?.size ?? 0) >= 2,
  );
  assert.ok(twoChains, 'one contract on two chains in two projects');
  assert.ok(
    [...hosts.values()].some((projects) => projects.size >= 2),
    'two projects sharing a website host',
  );
  assert.ok(wwwUrl > 0, 'websites as full URLs with www.');

  // Calls.
  assert.ok(pnl.fresh > 0 && pnl.stale > 0 && pnl.future > 0 && pnl.none > 0, `pnl kinds ${JSON.stringify(pnl)}`);
  assert.ok(fullCalls > 0, 'a call with 20 tokens and a thesis near 12,000 characters');
  assert.ok(overLong > 0, 'a thesis over 12,000 characters (ingest shortens it)');
  const matches = callTokens.map((t) => linkTargets.get(`${t.chain}:${t.contract}`)?.size ?? 0);
  assert.ok(
    matches.includes(0) && matches.includes(1) && matches.some((m) => m >= 2),
    'tokens matching none, one and two projects',
  );
  assert.ok(
    callTokens.some((t) => dossierTokens.has(`${t.chain}:${t.contract}`)),
    'a token matching a dossier token',
  );
  assert.deepEqual([...new Set(callTokens.map((t) => t.chain))].sort(), [...CHAINS].sort());
  const edited = [...callUpdated.values()].filter((u) => u.length >= 2 && u[u.length - 1]! > u[0]!);
  assert.ok(edited.length > 0, 'a call re-recorded with a later updatedAt');
  assert.ok(restoredAfterSuppression > 0, 'a call suppressed, then restored');
  assert.ok(suppressed.size > restoredAfterSuppression, 'a call that stays suppressed');
  assert.ok(collected > 0, 'calls.collected checkpoints');
  if (options.hotContract)
    assert.ok(
      hotCalls >= options.hotContract.count,
      `at least ${options.hotContract.count} calls name the hot contract`,
    );

  // Pulse: all beats but one, some quiet.
  assert.equal(beats.size, BEATS.length - 1);
  assert.ok(quiet > 0, 'a quiet card');
}
