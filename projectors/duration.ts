/** ISO 8601 duration of a positive number of milliseconds, e.g. `P2DT3H4M5S`, `PT0.25S`. */
export function isoDuration(ms: number): string {
  const totalSeconds = ms / 1000;
  const days = Math.floor(totalSeconds / 86400);
  const hours = Math.floor((totalSeconds % 86400) / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = Math.round((totalSeconds % 60) * 1000) / 1000;
  let time = '';
  if (hours) time += `${hours}H`;
  if (minutes) time += `${minutes}M`;
  if (seconds) time += `${seconds}S`;
  const date = days ? `${days}D` : '';
  if (!date && !time) return 'PT0S';
  return `P${date}${time ? `T${time}` : ''}`;
}
