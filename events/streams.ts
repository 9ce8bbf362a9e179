/** Stream naming. */
export const streams = {
  project: (projectId: string) => `project-${projectId}`,
  call: (callId: string) => `call-${callId}`,
  pulse: (beatId: string) => `pulse-${beatId}`,
  callsCollector: () => 'calls-collector',
  thesis: (contract: string) => `thesis-${contract.toLowerCase()}`,
  key: (keyId: string) => `key-${keyId}`,
  owner: (owner: string) => `owner-${owner}`,
  /** Per-UTC-day quota streams for the thesis caps, e.g. `thesis-quota-global-2026-11-22`. */
  thesisQuota: (scope: string, utcDay: string) => `thesis-quota-${scope}-${utcDay}`,
} as const;
