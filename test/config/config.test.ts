/** Server addresses are checked when the configuration is read, so a typo stops start-up naming the variable. */
import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { parseConfig } from '../../config/config.ts';

const cases: Record<string, { accepted: string[]; refused: string[]; reason: RegExp }> = {
  MONGODB_URL: {
    accepted: [
      'mongodb://mongodb:27017/pulseboard?replicaSet=rs0',
      'mongodb://a:1,b:2,c:3/pulseboard?replicaSet=rs0&directConnection=false',
      'mongodb://user:p%40ss@localhost/pulseboard',
      'mongodb+srv://cluster0.example.net/pulseboard?retryWrites=true',
      'mongodb://localhost',
    ],
    refused: ['localhost:27017', 'http://localhost:27017/db', 'mongodb://bad host/db', 'mongodb:///db', 'mongodb://'],
    reason: /MONGODB_URL: must be a MongoDB connection string/,
  },
  EVENTSTORE_URL: {
    accepted: [
      'kurrentdb://kurrentdb:2113?tls=false',
      'kurrentdb+discover://a:2113,b:2113',
      'kdb://localhost:2113',
      'kurrent://admin:changeit@localhost:2113',
    ],
    refused: ['esdb://localhost:2113', 'localhost:2113', 'kurrentdb://bad host:2113', 'nonsense'],
    reason: /EVENTSTORE_URL: must be a KurrentDB connection string/,
  },
  POSTGRES_URL: {
    accepted: [
      'postgres://postgres@127.0.0.1:5432/test',
      'postgresql://user:p%40ss@db.example.net/pulseboard?sslmode=require',
      'postgres://postgres@localhost/test?options=-c%20search_path%3Dpb',
    ],
    refused: ['localhost:5432', 'mysql://root@localhost/test', 'postgres://bad host/db', 'postgres://'],
    reason: /POSTGRES_URL: must be a PostgreSQL connection string/,
  },
  REDIS_URL: {
    accepted: ['redis://redis:6379', 'redis://127.0.0.1:6379/2', 'rediss://user:secret@cache.example.net:6380'],
    refused: ['nonsense', 'localhost:6379', 'http://redis:6379', 'redis://bad host:6379'],
    reason: /REDIS_URL: must be a Redis URL/,
  },
  KAFKA_BROKERS: {
    accepted: ['kafka:9092', 'a:9092,b:9093', 'a:9092, b:9093', '[::1]:9092', '10.0.0.5:9094'],
    refused: [':::', 'kafka', 'kafka:', 'kafka:port', 'a:9092,,b:9093', 'kafka://kafka:9092'],
    reason: /KAFKA_BROKERS: must be a comma-separated list of Kafka brokers/,
  },
  PULSEBOARD_MCP_ALLOWED_HOSTS: {
    accepted: ['mcp.example.com', 'api:8080, localhost', '[::1]:8080', '10.0.0.5', '*'],
    refused: ['http://mcp.example.com', 'bad host', ',', 'a,*', 'host:port'],
    reason: /PULSEBOARD_MCP_ALLOWED_HOSTS.*: must be a comma-separated list of host names/,
  },
  PULSEBOARD_MCP_ALLOWED_ORIGINS: {
    accepted: ['https://app.example.com', 'http://localhost:5173,https://a.example', '*'],
    refused: ['app.example.com', 'https://app.example.com/', 'ftp://a.example', 'https://a.example/path'],
    reason: /PULSEBOARD_MCP_ALLOWED_ORIGINS.*: must be a comma-separated list of origins/,
  },
};

describe('server addresses in the configuration', () => {
  for (const [variable, { accepted, refused, reason }] of Object.entries(cases)) {
    it(`${variable}: accepts what its client accepts`, () => {
      for (const value of accepted) {
        const parsed = parseConfig({ [variable]: value });
        assert.ok(parsed.ok, `${value}: ${parsed.ok ? '' : parsed.reason}`);
      }
    });

    it(`${variable}: refuses anything else, naming the variable`, () => {
      for (const value of refused) {
        const parsed = parseConfig({ [variable]: value });
        assert.equal(parsed.ok, false, value);
        assert.match(parsed.ok ? '' : parsed.reason, reason);
      }
    });
  }

  it('treats an empty value as unset (the embedded default)', () => {
    const parsed = parseConfig({ MONGODB_URL: '', EVENTSTORE_URL: '', REDIS_URL: '', KAFKA_BROKERS: '' });
    assert.ok(parsed.ok);
    assert.equal(parsed.config.MONGODB_URL, undefined);
    assert.equal(parsed.config.EVENTSTORE_URL, undefined);
  });
});

describe('PostgreSQL in the configuration', () => {
  it('POSTGRES_URL holds both the log and the read models, so it is refused beside EVENTSTORE_URL or MONGODB_URL', () => {
    const url = 'postgres://postgres@127.0.0.1:5432/test';
    assert.ok(parseConfig({ POSTGRES_URL: url, REDIS_URL: 'redis://127.0.0.1:6379', KAFKA_BROKERS: 'k:9092' }).ok);
    for (const other of [{ EVENTSTORE_URL: 'kurrentdb://k:2113' }, { MONGODB_URL: 'mongodb://m/pb' }]) {
      const refused = parseConfig({ POSTGRES_URL: url, ...other });
      assert.ok(!refused.ok);
      assert.match(refused.reason, /POSTGRES_URL: .*unset EVENTSTORE_URL and MONGODB_URL/);
    }
  });

  it('POSTGRES_REPLICA_URL is a PostgreSQL URL, and only beside POSTGRES_URL', () => {
    const url = 'postgres://postgres@127.0.0.1:5432/test';
    const replica = 'postgres://postgres@replica.example.net:5433/test';
    const both = parseConfig({ POSTGRES_URL: url, POSTGRES_REPLICA_URL: replica });
    assert.ok(both.ok);
    assert.equal(both.config.POSTGRES_REPLICA_URL, replica);
    const alone = parseConfig({ POSTGRES_REPLICA_URL: replica });
    assert.ok(!alone.ok);
    assert.match(alone.reason, /POSTGRES_REPLICA_URL: .*set POSTGRES_URL too/);
    const bad = parseConfig({ POSTGRES_URL: url, POSTGRES_REPLICA_URL: 'replica:5433' });
    assert.ok(!bad.ok);
    assert.match(bad.reason, /POSTGRES_REPLICA_URL: must be a PostgreSQL connection string/);
    assert.equal(parseConfig({ POSTGRES_URL: url, POSTGRES_REPLICA_URL: '' }).ok, true);
  });
});

describe('MCP settings in the configuration', () => {
  it('lower-cases and trims the allowed hosts and origins; unset stays unset (the loopback defaults)', () => {
    const parsed = parseConfig({
      PULSEBOARD_MCP_ALLOWED_HOSTS: ' MCP.Example.com , api:8080 ',
      PULSEBOARD_MCP_ALLOWED_ORIGINS: 'HTTPS://App.Example.com',
    });
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.config.PULSEBOARD_MCP_ALLOWED_HOSTS, ['mcp.example.com', 'api:8080']);
    assert.deepEqual(parsed.config.PULSEBOARD_MCP_ALLOWED_ORIGINS, ['https://app.example.com']);
    const defaults = parseConfig({});
    assert.ok(defaults.ok);
    assert.equal(defaults.config.PULSEBOARD_MCP_ALLOWED_HOSTS, undefined);
    assert.equal(defaults.config.PULSEBOARD_MCP_PROTOCOL_RATE_LIMIT, 120);
    assert.equal(parseConfig({ PULSEBOARD_MCP_PROTOCOL_RATE_LIMIT: '0' }).ok, false);
  });
});

describe('the memory map of the embedded read store in the configuration', () => {
  it('PULSEBOARD_SQLITE_MAP_MB is 0 (no map) by default, 0 or more MiB when set; anything else is refused naming the variable', () => {
    const defaults = parseConfig({});
    assert.ok(defaults.ok);
    assert.equal(defaults.config.PULSEBOARD_SQLITE_MAP_MB, 0);
    const some = parseConfig({ PULSEBOARD_SQLITE_MAP_MB: '1024' });
    assert.ok(some.ok);
    assert.equal(some.config.PULSEBOARD_SQLITE_MAP_MB, 1024);
    for (const wrong of ['-1', '1.5', 'lots']) {
      const refused = parseConfig({ PULSEBOARD_SQLITE_MAP_MB: wrong });
      assert.ok(!refused.ok, wrong);
      assert.match(refused.reason, /PULSEBOARD_SQLITE_MAP_MB/);
    }
  });
});

describe('HTTP operations settings in the configuration', () => {
  it('CORS origins are off by default, a list or *; anything else is refused naming the variable', () => {
    const defaults = parseConfig({});
    assert.ok(defaults.ok);
    assert.equal(defaults.config.PULSEBOARD_CORS_ORIGINS, undefined);
    assert.equal(defaults.config.PULSEBOARD_METRICS, 'on');
    assert.equal(defaults.config.PULSEBOARD_METRICS_PORT, undefined);
    const listed = parseConfig({
      PULSEBOARD_CORS_ORIGINS: 'https://App.example.com, http://localhost:5173',
      PULSEBOARD_METRICS: 'off',
      PULSEBOARD_METRICS_PORT: '9464',
    });
    assert.ok(listed.ok);
    assert.deepEqual(listed.config.PULSEBOARD_CORS_ORIGINS, ['https://app.example.com', 'http://localhost:5173']);
    assert.equal(listed.config.PULSEBOARD_METRICS, 'off');
    assert.equal(listed.config.PULSEBOARD_METRICS_PORT, 9464);
    const bad = parseConfig({ PULSEBOARD_CORS_ORIGINS: 'app.example.com/path' });
    assert.ok(!bad.ok);
    assert.match(bad.reason, /PULSEBOARD_CORS_ORIGINS/);
    assert.equal(parseConfig({ PULSEBOARD_METRICS_PORT: '70000' }).ok, false);
    assert.equal(parseConfig({ PULSEBOARD_METRICS: 'yes' }).ok, false);
  });
});
