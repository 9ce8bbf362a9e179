/** The authenticated caller of one request, on either surface. Never holds the raw key. */
export type Caller = { keyId: string; owner: string };
