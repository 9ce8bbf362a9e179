/**
 * CPU time the host took from this machine (Linux /proc/stat, the `steal` column): other guests'
 * load on a virtual machine. Printed beside a bench's ratios, since under it a load and its baseline
 * seconds apart get different shares of the CPU and the rounds' ratios swing.
 */
import { readFileSync } from 'node:fs';

export type CpuTimes = { steal: number; total: number };

/** The machine's CPU times so far, in clock ticks (zeros where /proc/stat cannot be read). */
export function cpuTimes(): CpuTimes {
  let line: string;
  try {
    line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  } catch {
    return { steal: 0, total: 0 };
  }
  // cpu user nice system idle iowait irq softirq steal …
  const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
  return { steal: ticks[7] ?? 0, total: ticks.reduce((sum, n) => sum + (Number.isFinite(n) ? n : 0), 0) };
}

/** The share of the machine's CPU time stolen since `start`, as a sentence for a bench's output. */
export function stolenSince(start: CpuTimes): string {
  const now = cpuTimes();
  const total = now.total - start.total;
  if (total <= 0) return 'CPU stolen by the host: not known here';
  const percent = (100 * (now.steal - start.steal)) / total;
  return `CPU stolen by the host meanwhile: ${percent.toFixed(1)} % of the machine's time${percent >= 5 ? " (other guests' load: the rounds' ratios swing with it)" : ''}`;
}
