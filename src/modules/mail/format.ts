/** Shared wording for e-mails and portal pages: dates in UTC, license types in words. */
const DATE = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });

export const formatDate = (ms: number): string => `${DATE.format(new Date(ms))} UTC`;

export const licenseTypeLabel = (type: 'perpetual' | 'timed'): string => (type === 'perpetual' ? 'Perpetual' : 'Subscription (timed)');

export const devicesLabel = (max: number): string => (max === 1 ? 'Up to 1 device' : `Up to ${max} devices`);
